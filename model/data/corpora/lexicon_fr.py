"""The English-French lexicon of the toy-fr corpus: nouns, adjectives and verbs with every form.

Tables are whitespace-separated text so the whole vocabulary reads at a glance; ``parse_*``
turns them into records. Noun tags say what a noun can do in a sentence (so that generated
sentences make sense): p person, a animal, f food, d drink, t portable thing, o can be opened,
r can be read, v vehicle, b building or place in town, n place in nature, x natural thing,
s song/idea/language (learnable), m mass noun (no "a", no plural; partitive du/de la in French).
"""

from __future__ import annotations

from dataclasses import dataclass

# english[/plural]  french[/plural]  gender  tags
NOUNS = """
boy garçon m p | girl fille f p | man/men homme m p | woman/women femme f p | child/children enfant m p
baby bébé m p | father père m p | mother mère f p | brother frère m p | sister sœur f p
friend ami m p | teacher professeur m p | doctor médecin m p | student étudiant m p | neighbor voisin m p
cook cuisinier m p | farmer fermier m p | actor acteur m p | singer chanteur m p | painter peintre m p
writer écrivain m p | soldier soldat m p | king roi m p | queen reine f p | uncle oncle m p
aunt tante f p | pilot pilote m p | nurse infirmière f p | baker boulanger m p | lawyer avocat m p
cat chat m a | dog chien m a | bird oiseau/oiseaux m a | horse cheval/chevaux m a | fish/fish poisson m af
mouse/mice souris/souris f a | cow vache f a | pig cochon m a | sheep/sheep mouton m a | duck canard m a
rabbit lapin m a | wolf/wolves loup m a | bear ours/ours m a | lion lion m a | tiger tigre m a
elephant éléphant m a | monkey singe m a | snake serpent m a | frog grenouille f a | bee abeille f a
spider araignée f a | hen poule f a | goat chèvre f a | fox/foxes renard m a
apple pomme f f | orange orange f f | banana banane f f | lemon citron m f | cake gâteau/gâteaux m f
egg œuf m f | carrot carotte f f | tomato/tomatoes tomate f f | pear poire f f | strawberry/strawberries fraise f f
cookie biscuit m f | pie tarte f f | fruit fruit m f | vegetable légume m f | chicken poulet m f
bread pain m fm | cheese fromage m fm | soup soupe f fm | rice riz m fm | meat viande f fm
sugar sucre m fm | salt sel m fm | butter beurre m fm | chocolate chocolat m fm | jam confiture f fm
honey miel m fm | water eau f dm | milk lait m dm | wine vin m dm | coffee café m dm
tea thé m dm | juice jus m dm
book livre m tor | letter lettre f tor | newspaper journal/journaux m tr | story/stories histoire f rs | pen stylo m t
pencil crayon m t | key clé f t | bag sac m to | box/boxes boîte f to | bottle bouteille f to
glass/glasses verre m t | cup tasse f t | plate assiette f t | knife/knives couteau/couteaux m t | spoon cuillère f t
fork fourchette f t | hat chapeau/chapeaux m t | shirt chemise f t | dress/dresses robe f t | shoe chaussure f t
coat manteau/manteaux m t | ball ballon m t | toy jouet m t | phone téléphone m t | computer ordinateur m t
lamp lampe f t | clock horloge f t | chair chaise f t | table table f t | picture image f t
gift cadeau/cadeaux m t | umbrella parapluie m t | ticket billet m t | map carte f t
car voiture f v | bus/buses bus/bus m v | train train m v | plane avion m v | boat bateau/bateaux m v
bicycle vélo m v
house maison f b | school école f b | city/cities ville f b | village village m b | market marché m b
shop magasin m b | bank banque f b | hotel hôtel m b | hospital hôpital/hôpitaux m b | church/churches église f b
park parc m b | station gare f b | office bureau/bureaux m b | library/libraries bibliothèque f b | museum musée m b
restaurant restaurant m b | kitchen cuisine f b | room chambre f b | garden jardin m b | street rue f b
bridge pont m b | river rivière f n | sea mer f n | lake lac m n | mountain montagne f n
forest forêt f n | beach/beaches plage f n | island île f n | tree arbre m x | flower fleur f x
door porte f o | window fenêtre f o | song chanson f s | language langue f s | question question f s
answer réponse f s | word mot m s | idea idée f s | music musique f sm | game jeu/jeux m s
lesson leçon f s
"""

# english  masc-sg fem-sg masc-pl fem-pl  position  tags  [masc-sg before a vowel]
ADJECTIVES = """
small petit petite petits petites before paxtvbnf
big grand grande grands grandes before paxtvbn
good bon bonne bons bonnes before pafds
beautiful beau belle beaux belles before paxtvbns bel
young jeune jeune jeunes jeunes before pa
old vieux vieille vieux vieilles before paxtvb vieil
new nouveau nouvelle nouveaux nouvelles before tvbs nouvel
pretty joli jolie jolis jolies before paxtvbn
bad mauvais mauvaise mauvais mauvaises before pafds
long long longue longs longues before nbs
black noir noire noirs noires after atvbx
white blanc blanche blancs blanches after atvbx
red rouge rouge rouges rouges after atvbxf
blue bleu bleue bleus bleues after tvbx
green vert verte verts vertes after atvbxf
yellow jaune jaune jaunes jaunes after atvbxf
gray gris grise gris grises after atvb
brown brun brune bruns brunes after atvb
pink rose rose roses roses after atvbx
happy heureux heureuse heureux heureuses after pa
sad triste triste tristes tristes after pa
tired fatigué fatiguée fatigués fatiguées after pa
hungry affamé affamée affamés affamées after pa
angry fâché fâchée fâchés fâchées after p
hot chaud chaude chauds chaudes after fdbn
cold froid froide froids froides after fdbn
rich riche riche riches riches after p
poor pauvre pauvre pauvres pauvres after p
strong fort forte forts fortes after pa
fast rapide rapide rapides rapides after pav
slow lent lente lents lentes after pav
clean propre propre propres propres after tvba
dirty sale sale sales sales after tvba
quiet calme calme calmes calmes after pab
noisy bruyant bruyante bruyants bruyantes after pab
sweet sucré sucrée sucrés sucrées after fd
delicious délicieux délicieuse délicieux délicieuses after fd
empty vide vide vides vides after ob
full plein pleine pleins pleines after ob
easy facile facile faciles faciles after s
difficult difficile difficile difficiles difficiles after s
funny drôle drôle drôles drôles after ps
kind gentil gentille gentils gentilles after pa
smart intelligent intelligente intelligents intelligentes after pa
famous célèbre célèbre célèbres célèbres after pbs
heavy lourd lourde lourds lourdes after t
light léger légère légers légères after t
round rond ronde ronds rondes after tfx
dark sombre sombre sombres sombres after bn
"""

# english base[:3sg][+particle]  french infinitive  je tu il nous vous ils  objects (- intransitive, go, or noun tags)
VERBS = """
be:is être suis es est sommes êtes sont be
have:has avoir ai as a avons avez ont patvf
go:goes aller vais vas va allons allez vont go
make faire fais fais fait faisons faites font f
take prendre prends prends prend prenons prenez prennent tvf
see voir vois vois voit voyons voyez voient patvbnxf
eat manger mange manges mange mangeons mangez mangent f
drink boire bois bois boit buvons buvez boivent d
sleep dormir dors dors dort dormons dormez dorment -
love aimer aime aimes aime aimons aimez aiment pafdsbn
watch regarder regarde regardes regarde regardons regardez regardent patvx
listen+to écouter écoute écoutes écoute écoutons écoutez écoutent pas
speak parler parle parles parle parlons parlez parlent -
sing chanter chante chantes chante chantons chantez chantent -
dance danser danse danses danse dansons dansez dansent -
walk marcher marche marches marche marchons marchez marchent -
run courir cours cours court courons courez courent -
read lire lis lis lit lisons lisez lisent r
write écrire écris écris écrit écrivons écrivez écrivent r
buy acheter achète achètes achète achetons achetez achètent tvfd
sell vendre vends vends vend vendons vendez vendent tvfd
open ouvrir ouvre ouvres ouvre ouvrons ouvrez ouvrent o
close fermer ferme fermes ferme fermons fermez ferment o
find trouver trouve trouves trouve trouvons trouvez trouvent tap
look+for chercher cherche cherches cherche cherchons cherchez cherchent tap
carry porter porte portes porte portons portez portent t
wash laver lave laves lave lavons lavez lavent tav
cook cuisiner cuisine cuisines cuisine cuisinons cuisinez cuisinent f
play jouer joue joues joue jouons jouez jouent -
work travailler travaille travailles travaille travaillons travaillez travaillent -
swim nager nage nages nage nageons nagez nagent -
jump sauter saute sautes saute sautons sautez sautent -
laugh rire ris ris rit rions riez rient -
cry:cries pleurer pleure pleures pleure pleurons pleurez pleurent -
wait+for attendre attends attends attend attendons attendez attendent pv
hear entendre entends entends entend entendons entendez entendent pas
understand comprendre comprends comprends comprend comprenons comprenez comprennent ps
learn apprendre apprends apprends apprend apprenons apprenez apprennent s
know connaître connais connais connaît connaissons connaissez connaissent pbs
want vouloir veux veux veut voulons voulez veulent tvfd
prepare préparer prépare prépares prépare préparons préparez préparent f
paint peindre peins peins peint peignons peignez peignent tbx
build construire construis construis construit construisons construisez construisent bv
clean nettoyer nettoie nettoies nettoie nettoyons nettoyez nettoient tbv
draw dessiner dessine dessines dessine dessinons dessinez dessinent patxb
follow suivre suis suis suit suivons suivez suivent pa
finish finir finis finis finit finissons finissez finissent fdrs
choose choisir choisis choisis choisit choisissons choisissez choisissent tfdv
visit visiter visite visites visite visitons visitez visitent bn
help aider aide aides aide aidons aidez aident p
call appeler appelle appelles appelle appelons appelez appellent pa
"""


@dataclass(frozen=True)
class Noun:
    english: str
    english_plural: str
    french: str
    french_plural: str
    gender: str  # "m" or "f"
    tags: str

    @property
    def is_mass(self) -> bool:
        return "m" in self.tags


@dataclass(frozen=True)
class Adjective:
    english: str
    forms: tuple[str, str, str, str]  # masc sg, fem sg, masc pl, fem pl
    before_noun: bool
    tags: str
    masculine_before_vowel: str  # bel, vieil, nouvel; otherwise the masculine singular

    def form(self, gender: str, plural: bool, next_word: str = "") -> str:
        if gender == "m" and not plural and next_word and starts_with_vowel_sound(next_word):
            return self.masculine_before_vowel
        return self.forms[(2 if plural else 0) + (1 if gender == "f" else 0)]


@dataclass(frozen=True)
class Verb:
    english: str  # base form
    english_third: str  # he/she/it form
    particle: str  # "to" in "listen to", or ""
    french: str  # infinitive
    forms: tuple[str, ...]  # je, tu, il/elle, nous, vous, ils/elles
    objects: str  # "-" intransitive, "be", "go", or noun tags its object may have


def english_plural(word: str) -> str:
    if word.endswith(("s", "sh", "ch", "x")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def english_third_person(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def french_plural(word: str) -> str:
    if word.endswith(("s", "x", "z")):
        return word
    if word.endswith(("eau", "eu")):
        return word + "x"
    return word + "s"


VOWEL_SOUNDS = "aeiouyàâäéèêëîïôöùûüœæh"  # every h-initial word of this lexicon has a mute h


def starts_with_vowel_sound(word: str) -> bool:
    return bool(word) and word[0].lower() in VOWEL_SOUNDS


def _entries(table: str) -> list[str]:
    return [entry.strip() for line in table.strip().splitlines() for entry in line.split("|") if entry.strip()]


def parse_nouns() -> list[Noun]:
    nouns = []
    for entry in _entries(NOUNS):
        english, french, gender, tags = entry.split()
        en_sg, _, en_pl = english.partition("/")
        fr_sg, _, fr_pl = french.partition("/")
        nouns.append(Noun(en_sg, en_pl or english_plural(en_sg), fr_sg, fr_pl or french_plural(fr_sg), gender, tags))
    return nouns


def parse_adjectives() -> list[Adjective]:
    adjectives = []
    for entry in _entries(ADJECTIVES):
        english, m_sg, f_sg, m_pl, f_pl, position, tags, *before_vowel = entry.split()
        adjectives.append(
            Adjective(english, (m_sg, f_sg, m_pl, f_pl), position == "before", tags, before_vowel[0] if before_vowel else m_sg)
        )
    return adjectives


def parse_verbs() -> list[Verb]:
    verbs = []
    for entry in _entries(VERBS):
        english, french, *forms, objects = entry.split()
        english, _, particle = english.partition("+")
        base, _, third = english.partition(":")
        verbs.append(Verb(base, third or english_third_person(base), particle, french, tuple(forms), objects))
    return verbs


NOUN_LIST = parse_nouns()
ADJECTIVE_LIST = parse_adjectives()
VERB_LIST = parse_verbs()
